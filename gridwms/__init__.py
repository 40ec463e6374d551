"""The project root: settings, the root URLconf, the API's composition, wsgi/asgi, the web server.

It sits above every app and may import any of them; no app imports it (tests/test_layers.py).
"""
