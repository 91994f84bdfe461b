"""The sandbox (docs/sandbox.md): `probe.py` whether bubblewrap works here (`probe()`, `decide()`),
`policy.py` what a step may see, `bwrap.py` a command as a `bwrap` command line (`Sandbox`),
`proxy.py` the run's HTTP(S) proxy, `netns.py` the network namespaces where it listens,
`forward.py` the forwarder inside where those cannot be made, `session.py` one run's sandbox."""
