"""The pure domain: records, the hash chain, lifecycle, policy and ranking. No I/O."""
