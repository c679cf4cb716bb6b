"""`python -m memstrata.service --root R`: run the warm service of a root in this process."""
import sys

from memstrata.service.host import main

sys.exit(main())
