//! Runnable examples; see the `[[example]]` targets.
