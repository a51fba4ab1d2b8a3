"""Policy files of the PPO agent (safetensors, the network described in the header; no pickle).

    strategic-reserve policy-file show models/ppo_baseline.safetensors   # the description in the header
    strategic-reserve policy-file convert MODEL.zip [OUT.safetensors]   # an SB3 zip you trust -> a policy file

convert unpickles the zip: that is the one step that trusts it (the train extra).
"""

from __future__ import annotations

import json

from strategic_reserve_env.commands import fail
from strategic_reserve_env.commands.arguments import command_parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Convert or show; one line on stderr and exit 2 for a file that cannot be read or written."""
    parser = command_parser(prog, __doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    converting = commands.add_parser("convert", help="SB3 MaskablePPO .zip (trusted: it is unpickled) -> policy file")
    converting.add_argument("zip", help="the SB3 model .zip")
    converting.add_argument("out", nargs="?", help="the policy file (default: the zip's path with .safetensors)")
    commands.add_parser("show", help="print the description in a policy file's header").add_argument("file")
    args = parser.parse_args(argv)
    from strategic_reserve_env.agents.ppo_file import convert, read_description

    try:
        if args.command == "convert":
            print(f"wrote {convert(args.zip, args.out)}")
        else:
            print(json.dumps(read_description(args.file), indent=1))
    except BrokenPipeError:  # the reader went away: the command line ends quietly
        raise
    except (OSError, ValueError) as error:
        return fail(str(error))
    return 0
