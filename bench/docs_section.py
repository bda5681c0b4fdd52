"""Writing a bench's table into its section of a document: from its marker to the next marker, atomically."""

import os


def replace_section(doc: str, marker: str, body: str) -> None:
    """Replaces the text from `marker` to the next `<!-- ` marker (or the end) by `body`, which starts with the
    marker; appends it when the document has none yet."""
    text = open(doc).read()
    if marker in text:
        start = text.index(marker)
        end = text.find("\n<!-- ", start + len(marker))
        text = text[:start] + body + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    open(doc + ".tmp", "w").write(text)
    os.replace(doc + ".tmp", doc)
