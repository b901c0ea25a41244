"""`cachelint check`: the static analyzer for code that breaks prompt caching."""
