"""One module per noun: each adds its subcommands to the parser and handles them."""
