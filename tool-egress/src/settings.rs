//! Claude Code's settings as an egress policy.
