"""`cachelint proxy`: a mitmproxy addon that records LLM API traffic and explains every cache break.

Load it into mitmproxy with `mitmdump -s proxy/addon.py` (or the installed path of cachelint.proxy.addon),
or run `cachelint proxy`, which starts mitmproxy with it.
"""
