"""Unit tests of the svc_agent SDK."""
