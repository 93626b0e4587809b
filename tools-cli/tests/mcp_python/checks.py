"""What every script here uses: a check that says what it checked, and a result's text."""


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")
