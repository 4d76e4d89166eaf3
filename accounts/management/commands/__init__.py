"""createtenant, createapikey."""
