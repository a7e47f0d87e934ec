"""`python -m bench`: measures what the resident engine buys on the test model, side by side with baselines.

workload.py owns the inputs (documents, conversations), baseline.py the llama.cpp decode-loop program,
parts.py the four measurements, versus.py our server against llama.cpp's llama-server (`make
llama-server`) and the prefill speed by chunk size, __main__.py the command line and the summary table.
"""
