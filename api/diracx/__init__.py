"""DiracX's API on gridwms (views.py says which endpoints): DiracX's command line and client
library work against gridwms unmodified."""
