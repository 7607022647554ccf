"""The leaderboard's server: `streamlit run leaderboard/serve.py`.

The same pages as `streamlit run leaderboard/app.py`, served by a server that gets them ready before it takes its
first visitor: it imports what the pages draw with and loads the score cards (cards.warm), so the first page after a
restart is drawn as fast as any later one. Streamlit runs this file as an app server (st.App) and app.py for each
visitor; the settings beside it (.streamlit/config.toml) apply to both."""

from __future__ import annotations

import asyncio
import sys
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

    await asyncio.to_thread(warm)
    yield


app = st.App(str(HERE / "app.py"), lifespan=ready)
