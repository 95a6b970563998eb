"""One module per chapter of the book: what that chapter's notebook calls.

Chapter N's notebook imports `memory_lab.book.chapter` (its setup) and
`memory_lab.chapters.<name> as study`, and nothing else of the lab except the
ladders chapter 7 reads and the intervals several chapters print. A chapter's
own study code lives in its module; the shared study tools (`memory_lab.studies`)
are imported there by name, so a module's imports say what its chapter uses.

    1 ingest      2 chunking     3 embeddings   4 fusion      5 reranking   6 context
    7 ladder      8 failures     9 reader      10 grader     11 peps
"""
