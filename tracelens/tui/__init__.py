"""The live screen (`tracelens tui`): Textual views over a `tracelens.live.LiveSession`."""
