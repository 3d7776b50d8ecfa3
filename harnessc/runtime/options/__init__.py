"""What a harness is built from and what its extensions see of it: ``AgentHarnessOptions``
(``harness_options``), the typed result it may ask for (``typed_output``) and the typed
seam ``HarnessContext`` with the ``Extension`` protocol (``harness_context``). Above the
parts it names (providers, tools, sessions, resources), below the loop."""
