"""A small support-bot app for the source-link tests: the prompt is built in prompts.py, the tools in
tools.py, the history window in history.py, and the request is sent in client.py.

Each line that causes a cache break carries a `# link: <scenario>` marker; the tests read the expected
file and line from these markers, so editing the app keeps the tests honest.
"""
