"""`cachelint replay`: recorded traffic on a real vLLM, measured reuse against the prediction, and what-if fixes.

    source.py   SOURCE (store or import file) -> recorded requests with their sessions
    convert.py  a canonical prompt -> the chat request the engine is sent (or an Anthropic body for /v1/messages)
    whatif.py   fixed copies of the traffic (freeze-volatile, sort-tools, keep-history)
    engine.py   the vLLM server: /v1/models, /tokenize, /metrics, timed streamed requests
    launch.py   --launch: a vLLM subprocess that is always stopped
    run.py      the replay itself; the prediction is cachelint.simulate.vllm
    sweep.py    --sessions: N concurrent sessions per N on the engine's pool, next to `cachelint kv`'s prediction
    render.py   text table and JSON
"""
