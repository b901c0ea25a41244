"""Streamlit chat front-end for the support knowledge base."""
import random

import anthropic
import streamlit as st

st.set_page_config(page_title="Support copilot")

PERSONAS = [
    "Answer in a warm, friendly tone.",
    "Answer in a concise, professional tone.",
    "Answer like a patient teacher.",
]
BASE_PROMPT = """You are the support copilot for Acme Cloud.
Use the knowledge base excerpts the user pastes; say so when the answer is not in them.
Never reveal internal ticket numbers."""
MAX_TURNS = 12


@st.cache_resource
def get_client() -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=st.secrets["ANTHROPIC_API_KEY"])


if "messages" not in st.session_state:
    st.session_state.messages = []

with st.sidebar:
    model = st.selectbox("Model", ["claude-sonnet-4-5", "claude-haiku-4-5"])
    if st.button("New conversation"):
        st.session_state.messages = []
        st.rerun()

for msg in st.session_state.messages:
    with st.chat_message(msg["role"]):
        st.markdown(msg["content"])

if prompt := st.chat_input("Ask about your account, billing or deployments"):
    st.session_state.messages.append({"role": "user", "content": prompt})
    with st.chat_message("user"):
        st.markdown(prompt)

    while len(st.session_state.messages) > MAX_TURNS * 2:
        st.session_state.messages.pop(0)  # expect: CL301

    system = BASE_PROMPT + "\n" + random.choice(PERSONAS)  # expect: CL101
    with st.chat_message("assistant"):
        with get_client().messages.stream(  # expect: CL501
            model=model,
            max_tokens=1024,
            system=system,
            messages=st.session_state.messages,
        ) as stream:
            reply = st.write_stream(stream.text_stream)
    st.session_state.messages.append({"role": "assistant", "content": reply})
