"""Servers on 127.0.0.1 that the tests and the benchmarks point akira at: the fake
OpenAI-compatible server (`fake_openai`), the scripted model servers the real agent CLIs talk to
(`scripted` and one module per wire format), and the scripted GitHub server the real gh talks to
(`github_server`). They are test support: the wheel does not ship them."""
