import sys

from tests.helpers.standin_sdk import main

sys.exit(main())
