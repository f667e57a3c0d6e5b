from vllmkit.cli.app import main

main()
