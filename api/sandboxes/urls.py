from api.sandboxes import views

routes: list = []

# Actions on the matcher's job collection: submissions with input files or as a JDL text,
# /jobs/{id}/sandbox/, /jobs/{id}/sandbox/{name}, /jobs/{id}/log/ (the project root mixes
# them in).
extends = {"jobs": views.SandboxJobsMixin}
