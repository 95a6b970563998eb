"""The book: executing the chapters and building it (`build`), the setup call every chapter
makes (`chapter`), the README's results sections rendered from their artifacts (`readme`),
the newcomer's reproduction check (`reproduction`), the built pages checked in Chromium
(`check`) and the book root, found from the working directory (`paths`).
"""
