"""chunknav explorer: the Streamlit face of the engine.

``explorer/app.py`` is the entry point (frame + ``st.navigation`` router);
``explorer/state.py`` builds the engine objects once per process;
``explorer/widgets.py`` holds the shared widgets (tool-call panel, failure
callouts, hits, marked text); ``explorer/jobs.py`` runs index jobs in a
background thread; ``explorer/views.py`` renders the page views. Pages in
``pages/`` are thin: they read their widgets, call one tool through
``widgets.run_tool`` and render the envelope with these helpers.
"""
