#!/bin/sh
# Run from the repository root after `cargo build --release -p yamor`; the
# figures are in docs/experiments.md.
# Success over 100 random starts per structure, connection type and controller.
for s in chair-4 stool-4 stool-6; do
  for t in parallel perpendicular shear-z shear-s; do
    ./target/release/yamor roombots build examples/roombots/structures/$s.xml --connection $t --rule can-move --no-look-ahead --trials 100 | sed "s/^/seed  /"
    ./target/release/yamor roombots build examples/roombots/structures/$s.xml --connection $t --rule reserve --trials 100 | sed "s/^/ours  /"
  done
done
