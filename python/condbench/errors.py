"""Errors as the one line condbench prints for them, shared by the peer and the compiler."""


class Described(RuntimeError):
    """An error whose message is already one line naming its cause's type (first_line keeps it)."""


def first_line(error: BaseException) -> str:
    """An exception as one line of at most 300 characters: its type and its message's first line."""
    text = str(error).strip().splitlines()
    if isinstance(error, Described):
        return (text[0] if text else "")[:300]
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")[:300]
