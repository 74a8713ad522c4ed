"""torchtitan's graph_trainer under passcheck: its debug models traced by its own tracer
(models), its passes verified and compared with passcheck's (sac, ep_chunk, fsdp,
cudagraph, partitioners), and `verify_pass` for a pass author (verify). Importing this
package does not import torchtitan; its modules do when used."""

from .verify import PassVerification, PassVerificationError, verify_pass  # noqa: F401
