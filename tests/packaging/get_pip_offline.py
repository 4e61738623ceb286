"""Stands in for ansible-test's pip bootstrap script (get-pip.py from ci-files.testing.ansible.com, a
host CI cannot reach): the same job done with the interpreter's own ensurepip, then pip from the
package index pip is configured with. ansible-test runs it as `python get_pip.py [options] pip==X`."""

import subprocess
import sys

# get-pip.py's own options, which pip itself does not take.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call(
    [sys.executable, "-m", "pip", "install", *(a for a in sys.argv[1:] if a not in GET_PIP_ONLY)]
)
