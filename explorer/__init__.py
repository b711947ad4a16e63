"""chunknav explorer: the Streamlit face of the engine.

``app.py`` is the entry point (frame + ``st.navigation`` router) over the
rows of ``nav.py`` (one per page); ``access.py`` decides who may see it;
``links.py`` builds and validates every page's URL parameters; ``state.py``
builds the engine objects once per process; ``jobs.py`` runs index jobs in a
background thread; ``widgets.py`` holds the shared widgets (tool-call panel,
failure callouts, hits, marked text, the chunk views), ``retrieval.py`` the
Explore page's parts, ``run_views.py`` the index run and Status views,
``source_view.py`` the Source page's panels and ``table.py`` plain tables.
Pages in ``pages/`` are thin: they read their widgets, call one tool through
``widgets.run_tool`` and render the envelope with these helpers.
"""
