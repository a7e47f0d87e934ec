"""The tools the model calls: their schemas (schemas.py), the runner that carries out a request's calls
(runner.py), the files they may read (workspace_files.py: the path rules) and the ledger of the edits they
propose (proposals.py). Tools never write to disk."""
