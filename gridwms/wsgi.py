import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gridwms.settings")
django_application = get_wsgi_application()

# Pilots' match requests take a short path; everything else is Django's (api/pilots/wsgi.py).
from api.pilots.wsgi import PilotMatchPath  # noqa: E402  (needs the settings set up)

application = PilotMatchPath(django_application)
