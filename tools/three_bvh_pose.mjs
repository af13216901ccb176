// World joint positions of a BVH file as three.js reads it (BVHLoader, an AnimationMixer), for
// tests/io/test_bvh_three.py: node tools/three_bvh_pose.mjs FILE.bvh --frames 0,10,20 (npm ci in tools/ first)
// Prints {"frames": F, "frame_time": s, "poses": {frame: {joint: [x, y, z]}}} (End Sites as <parent>_end).
import { readFile } from "node:fs/promises";
import * as THREE from "three";
import { BVHLoader } from "three/examples/jsm/loaders/BVHLoader.js";

const [file, flag, list] = process.argv.slice(2);
if (!file || flag !== "--frames" || !list) {
  console.error("usage: node three_bvh_pose.mjs FILE.bvh --frames 0,10,20");
  process.exit(2);
}
const { skeleton, clip } = new BVHLoader().parse(await readFile(file, "utf8"));
const scene = new THREE.Group();
scene.add(skeleton.bones[0]);
const mixer = new THREE.AnimationMixer(scene);
const action = mixer.clipAction(clip);
action.setLoop(THREE.LoopOnce, 1); // held at the end: a looping action wraps the last key time to the first frame
action.clampWhenFinished = true;
action.play();
const times = clip.tracks[0].times;
const out = { frames: times.length, frame_time: times.length > 1 ? times[1] - times[0] : 0, poses: {} };
const v = new THREE.Vector3();
for (const f of list.split(",").map(Number)) {
  action.reset();
  mixer.setTime(times[f]);
  scene.updateMatrixWorld(true);
  const pose = {};
  for (const bone of skeleton.bones) {
    pose[bone.name === "ENDSITE" ? `${bone.parent.name}_end` : bone.name] = bone.getWorldPosition(v).toArray();
  }
  out.poses[f] = pose;
}
console.log(JSON.stringify(out));
