"""Security: listeners (TLS), SASL authentication, SCRAM credentials and ACL authorization.

broker/security/service.py builds it all from the configuration as `broker.security`.
"""
