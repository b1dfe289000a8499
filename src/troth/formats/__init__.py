"""Pure codecs, one per format: bytes in, records out, and back."""
