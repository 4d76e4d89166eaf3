"""The tenant's web dashboard: overview, keys, history, jobs, voices (``views``), the
streaming playground (``playground``), usage charts and export (``usage``), pronunciation
dictionaries (``pronunciation``) and their forms (``forms``). Server-rendered Django views
over the capability packages; the templates are in ``templates/tts``.
"""
