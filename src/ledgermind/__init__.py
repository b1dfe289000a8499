"""ledgermind."""
