"""The leaderboard's server: `streamlit run leaderboard/serve.py`.

The same pages as `streamlit run leaderboard/app.py`, served by a server that gets them ready as soon as it starts,
without waiting for a visitor: it imports what the pages draw with and loads the score cards (cards.warm), so a
visitor after a restart finds them loaded. It takes visitors meanwhile (a host's health check is answered at once,
however long a first check of thousands of cards takes); one who comes sooner waits for that same load, as on the
first visit of app.py. Streamlit runs this file as an app server (st.App) and app.py for each visitor; the settings
beside it (.streamlit/config.toml) apply to both."""

from __future__ import annotations

import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
for path in (HERE.parent / "src", HERE):  # as app.py: a checkout without the package installed
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


@asynccontextmanager
async def ready(_app):
    from cards import warm

    # Streamlit's cache computes a key once at a time: a page asking meanwhile waits for this load, not another
    threading.Thread(target=warm, name="load the cards", daemon=True).start()
    yield


app = st.App(str(HERE / "app.py"), lifespan=ready)
