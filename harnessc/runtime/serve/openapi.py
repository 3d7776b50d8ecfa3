"""The OpenAPI document of the native API (served at /openapi.json)."""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_document"]


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _json(schema: str, description: str = "OK") -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }


_SESSION_ID = {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}
_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
_ERRORS = {"401": _error("no or a wrong bearer token"), "404": _error("no such run")}


def openapi_document(agent_name: str, description: str) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": f"{agent_name} (harnessc)", "version": "1", "description": description},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "properties": {
                                "type": {"type": "string"},
                                "message": {"type": "string"},
                                "param": {
                                    "type": ["string", "null"],
                                    "description": "the field at fault",
                                },
                                "code": {"type": "string", "description": "the problem"},
                            },
                        }
                    },
                },
                "StartRun": {
                    "type": "object",
                    "required": ["prompt"],
                    "properties": {
                        "prompt": {"type": "string"},
                        "session_id": {"type": "string", "description": "continue this session"},
                        "images": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "data": {"type": "string", "description": "base64"},
                                    "mime_type": {"type": "string"},
                                },
                            },
                        },
                        "model": {"type": "string", "description": "a key of the agent's models"},
                        "budget": {"type": "object", "description": "limits by name for this run"},
                    },
                },
                "Usage": {
                    "type": "object",
                    "properties": {
                        name: {"type": "number"}
                        for name in (
                            "input_tokens",
                            "output_tokens",
                            "cache_read_tokens",
                            "cache_write_tokens",
                            "total_tokens",
                            "cost_usd",
                            "turns",
                            "tool_calls",
                        )
                    },
                },
                "Pause": {
                    "type": "object",
                    "properties": {
                        "kind": {
                            "enum": [
                                "tool_results",
                                "approval",
                                "budget",
                                "shutdown",
                                "hook",
                                "mcp_login",
                                "mcp_elicitation",
                            ]
                        },
                        "reason": {"type": "string"},
                        "calls": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/PendingCall"},
                        },
                        "budget": {"type": "object"},
                        "payload": {"type": "object"},
                    },
                },
                "Started": {
                    "type": "object",
                    "properties": {
                        "run_id": {"type": "string"},
                        "session_id": {
                            "type": ["string", "null"],
                            "description": "null for a durable run until a worker begins it",
                        },
                    },
                },
                "PendingCall": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "the model's own call id"},
                        "name": {"type": "string"},
                        "arguments": {"type": "object"},
                        "held": {"type": "boolean", "description": "an approval answers it"},
                        "path": {"type": "string", "description": "the sub-agent's path"},
                    },
                },
                "RunStatus": {
                    "type": "object",
                    "properties": {
                        "run_id": {"type": "string"},
                        "session_id": {"type": ["string", "null"]},
                        "status": {
                            "enum": [
                                "queued",
                                "running",
                                "done",
                                "paused",
                                "awaiting_tool",
                                "error",
                                "aborted",
                            ]
                        },
                        "reason": {"type": "string"},
                        "text": {"type": "string", "description": "the final text"},
                        "output": {"description": "the typed value (an agent with output:)"},
                        "usage": {"$ref": "#/components/schemas/Usage"},
                        "pause": {
                            "oneOf": [{"$ref": "#/components/schemas/Pause"}, {"type": "null"}]
                        },
                        "pending_tool_calls": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/PendingCall"},
                        },
                        "events": {"type": "integer"},
                        "usage_by_agent": {
                            "type": ["object", "null"],
                            "description": "what each agent of the run's tree used once "
                            "the run ended, by agent path (turns, tool_calls, input_tokens, "
                            "output_tokens, cache_read_tokens, cache_write_tokens, cost_usd)",
                        },
                    },
                },
                "Resume": {
                    "type": "object",
                    "properties": {
                        "results": {
                            "type": "object",
                            "description": 'call id -> result string or {"error": "..."}',
                        },
                        "approvals": {
                            "type": "object",
                            "additionalProperties": {
                                "oneOf": [
                                    {"type": "boolean"},
                                    {"enum": ["allow", "deny", "always"]},
                                    {
                                        "type": "object",
                                        "properties": {
                                            "decision": {"enum": ["allow", "deny", "always"]},
                                            "fingerprint": {"type": "string"},
                                        },
                                        "required": ["decision"],
                                    },
                                ]
                            },
                            "description": "held call id -> true / allow (run it), false / "
                            "deny (refuse it), always (run it and the same call again); "
                            "with the fingerprint of the call as it was shown, it answers "
                            "that call only (409 when its arguments changed)",
                        },
                        "budget": {
                            "type": "object",
                            "description": "raised limits: turns, tool_calls, wall_clock_s, tokens, cost_usd",
                        },
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/healthz": {"get": {"security": [], "responses": {"200": {"description": "alive"}}}},
            "/v1/runs": {
                "post": {
                    "summary": "Start a run",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/StartRun"}
                            }
                        }
                    },
                    "responses": {
                        "201": _json("Started", "started"),
                        "400": _error("a malformed body"),
                        "401": _error("no or a wrong bearer token"),
                        "409": _error("the session has a run working or paused"),
                        "413": _error("the body is too large"),
                        "415": _error("the body is not JSON"),
                        "429": _error("too many runs working (see Retry-After)"),
                    },
                }
            },
            "/v1/runs/{run_id}": {
                "get": {
                    "summary": "A run's status",
                    "parameters": [_RUN_ID],
                    "responses": {"200": _json("RunStatus"), **_ERRORS},
                }
            },
            "/v1/runs/{run_id}/events": {
                "get": {
                    "summary": "The run's events (text/event-stream, ids = event numbers; "
                    "Last-Event-ID resumes); ends when the run ends or pauses",
                    "parameters": [
                        _RUN_ID,
                        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer"}},
                    ],
                    "responses": {
                        "200": {"description": "events", "content": {"text/event-stream": {}}},
                        **_ERRORS,
                    },
                }
            },
            "/v1/runs/{run_id}/resume": {
                "post": {
                    "summary": "Answer a pause",
                    "parameters": [_RUN_ID],
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Resume"}}
                        }
                    },
                    "responses": {
                        "200": {"description": "resumed"},
                        "409": _error("not paused, or answers that do not match"),
                        **_ERRORS,
                    },
                }
            },
            "/v1/runs/{run_id}/abort": {
                "post": {
                    "summary": "Abort a run",
                    "parameters": [_RUN_ID],
                    "responses": {"200": {"description": "aborting"}, **_ERRORS},
                }
            },
            "/v1/sessions": {
                "get": {
                    "summary": "The agent's sessions; ?q= searches them",
                    "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "sessions or hits"}},
                }
            },
            "/v1/sessions/{session_id}": {
                "get": {
                    "summary": "A session's messages and latest run",
                    "parameters": [
                        {
                            "name": "session_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": {"description": "the session"},
                        "404": _error("no such session"),
                    },
                }
            },
            "/v1/sessions/{session_id}/rewind": {
                "post": {
                    "summary": "Move the session to an entry with the conversation, the files or both",
                    "parameters": [_SESSION_ID],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["entry_id", "mode"],
                                    "properties": {
                                        "entry_id": {"type": "string"},
                                        "mode": {
                                            "type": "string",
                                            "enum": ["both", "conversation", "files"],
                                        },
                                        "force": {"type": "boolean"},
                                        "dry_run": {"type": "boolean"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {"description": "the plan (changes, conflicts, diff) and outcome"},
                        **_ERRORS,
                    },
                }
            },
            "/v1/sessions/{session_id}/checkpoints": {
                "get": {
                    "summary": "Recent checkpoints and what restoring each would change",
                    "parameters": [_SESSION_ID],
                    "responses": {"200": {"description": "the checkpoints"}, **_ERRORS},
                }
            },
            "/v1/chat/completions": {
                "post": {"summary": "OpenAI-compatible chat completions (model = the agent's name)"}
            },
            "/v1/models": {"get": {"summary": "OpenAI-compatible model list (the agent)"}},
            "/agui": {"post": {"summary": "AG-UI: RunAgentInput in, AG-UI events out"}},
        },
    }
