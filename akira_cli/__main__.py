import sys

from akira_cli.cli import main

sys.exit(main())
