from cdclake.cli import main

raise SystemExit(main())
