"""Dataset readers (STS, NLI pairs, BEIR, raw text) and the bundled demo corpus builder."""
