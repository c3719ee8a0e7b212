"""Identity surfaces: SCIM 2.0 provisioning (``/scim/v2``) and OpenID Connect single sign-on (``/sso``)."""
