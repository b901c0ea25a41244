"""One module per `cachelint` command; cachelint.cli puts them in the group."""
