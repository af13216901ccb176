#!/usr/bin/env node
// Pose a .glb with three.js, as a game engine would read it, and print world positions as JSON on stdout.
// Usage: node tools/three_pose.mjs FILE.glb --times T1,T2,... [--skin-time T]   (run `npm ci` in tools/ first)
//
// three's GLTFLoader parses the file (no DOM: a GLB without textures needs none); an AnimationMixer plays the
// first animation once, held at its end (LoopOnce, clampWhenFinished: a looping action would wrap the last key
// time back to the first frame). For each time T: action.reset() (the clamped action pauses at the end),
// mixer.setTime(T), scene.updateMatrixWorld(true), then the world
// position of every glTF node, keyed by the node's name in the file (three renames duplicates; refused here).
// With --skin-time, the skinned mesh's vertices are posed at that time by three's own skinning
// (SkinnedMesh.getVertexPosition: bind matrix, bone world matrices times inverse bind matrices) and printed
// in world space, with their bind-pose positions and their most-weighted bone.
//
// Output: {"three": REVISION, "animation": {name, duration, tracks}, "rest": {node: [x, y, z]},
//          "poses": [{"time": T, "nodes": {node: [x, y, z]}}],
//          "skin": {"time": T, "mesh": name, "bones": [node], "bind": [[x, y, z]], "posed": [[x, y, z]],
//                   "bone": [index into bones], "weight": [its weight]}}
// Exit code: 0 on success, 2 when the file could not be loaded or posed (the reason on stderr).
import { readFile } from "node:fs/promises";
import { AnimationMixer, LoopOnce, REVISION, Vector3 } from "three";
import { GLTFLoader } from "three/examples/jsm/loaders/GLTFLoader.js";

function usage(message) {
  console.error(`${message}\nusage: node tools/three_pose.mjs FILE.glb --times T1,T2,... [--skin-time T]`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { file: null, times: [], skinTime: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--times") args.times = (argv[++i] ?? "").split(",").filter((s) => s !== "").map(Number);
    else if (a === "--skin-time") args.skinTime = Number(argv[++i]);
    else if (args.file === null) args.file = a;
    else usage(`unexpected argument ${a}`);
  }
  if (!args.file) usage("no file given");
  if (args.times.some((t) => !Number.isFinite(t)) || (args.skinTime !== null && !Number.isFinite(args.skinTime))) {
    usage("times must be numbers");
  }
  return args;
}

function parse(bytes) {
  const data = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  return new Promise((resolve, reject) => new GLTFLoader().parse(data, "", resolve, reject));
}

const xyz = (v) => [v.x, v.y, v.z];

const args = parseArgs(process.argv.slice(2));
try {
  const gltf = await parse(await readFile(args.file));
  const { scene, parser } = gltf;
  const json = parser.json;
  // three object -> the glTF node it came from (GLTFLoader's associations), keyed by the name in the file
  const nodes = new Map();
  scene.traverse((object) => {
    const index = parser.associations.get(object)?.nodes;
    if (index === undefined) return;
    const name = json.nodes[index].name ?? `node${index}`;
    if (nodes.has(name)) throw new Error(`two nodes are named ${JSON.stringify(name)}`);
    nodes.set(name, object);
  });
  const worldPositions = () => {
    scene.updateMatrixWorld(true);
    const out = {};
    for (const [name, object] of nodes) out[name] = xyz(object.getWorldPosition(new Vector3()));
    return out;
  };
  const result = { three: REVISION, rest: worldPositions(), poses: [] };

  const clip = gltf.animations[0];
  if (!clip) throw new Error("the file has no animation");
  result.animation = { name: clip.name, duration: clip.duration, tracks: clip.tracks.length };
  const mixer = new AnimationMixer(scene);
  const action = mixer.clipAction(clip);
  action.setLoop(LoopOnce, 1);
  action.clampWhenFinished = true;
  action.play();
  const seek = (time) => {
    action.reset(); // a clamped action pauses at its end, and a paused one would not follow setTime any more
    mixer.setTime(time);
  };
  for (const time of args.times) {
    seek(time);
    result.poses.push({ time, nodes: worldPositions() });
  }

  if (args.skinTime !== null) {
    const meshes = [];
    scene.traverse((object) => object.isSkinnedMesh && meshes.push(object));
    if (meshes.length !== 1) throw new Error(`expected one skinned mesh, found ${meshes.length}`);
    const mesh = meshes[0];
    const boneName = new Map([...nodes].map(([name, object]) => [object, name]));
    const bones = mesh.skeleton.bones.map((bone) => boneName.get(bone) ?? bone.name);
    seek(args.skinTime);
    scene.updateMatrixWorld(true);
    const position = mesh.geometry.attributes.position;
    const skinIndex = mesh.geometry.attributes.skinIndex;
    const skinWeight = mesh.geometry.attributes.skinWeight;
    const skin = { time: args.skinTime, mesh: mesh.name, bones, bind: [], posed: [], bone: [], weight: [] };
    const v = new Vector3();
    for (let i = 0; i < position.count; i++) {
      skin.bind.push(xyz(v.fromBufferAttribute(position, i)));
      mesh.getVertexPosition(i, v); // morphs, then skinning: bindMatrix, bones' matrixWorld x boneInverses
      skin.posed.push(xyz(v.applyMatrix4(mesh.matrixWorld)));
      let best = 0;
      for (let k = 1; k < skinWeight.itemSize; k++) {
        if (skinWeight.getComponent(i, k) > skinWeight.getComponent(i, best)) best = k;
      }
      skin.bone.push(skinIndex.getComponent(i, best));
      skin.weight.push(skinWeight.getComponent(i, best));
    }
    result.skin = skin;
  }
  console.log(JSON.stringify(result));
} catch (error) {
  console.error(`${args.file}: three.js could not load or pose it: ${error?.stack ?? error}`);
  process.exit(2);
}
