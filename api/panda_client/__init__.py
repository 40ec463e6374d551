"""PanDA's client library (panda-client's pandaclient.Client) against gridwms: its job API under
/api/v1/ (job/submit, job/get_description, job/kill, system/is_alive) in PanDA's JSON envelope,
mapped onto the native services. These endpoints follow PanDA's API, not gridwms's, and stay out
of gridwms's OpenAPI schema (docs/user-guide.md, PanDA's client)."""
