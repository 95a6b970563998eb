"""Public corpora turned into something the library ingests and the instrument scores.

`beir` materialises a BEIR folder (SciFact) as one file per document; `peps`
builds the Python Enhancement Proposals with the past versions their temporal
tasks name, from the python/peps history.
"""
