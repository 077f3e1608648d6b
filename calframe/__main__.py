import sys

from .cli import main

if __name__ == "__main__":  # `python -m calframe`; importing the module (docs tools do) runs nothing
    sys.exit(main())
