"""Collection: transports (local, SSH, sessions, replay), targets, remote command lines."""
