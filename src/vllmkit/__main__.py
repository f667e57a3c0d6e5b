from vllmkit.cli.entry import main

main()
