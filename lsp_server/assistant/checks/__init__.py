"""Checking an edit: the project's tests found for it (discovery.py), run on a copy of the folder in a
bubblewrap sandbox (sandbox.py) by the Verifier (verifier.py), their failures read back (failures.py), and
new tests kept only where they pass (passing_tests.py)."""
