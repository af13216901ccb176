// skelanim browser viewer (MIT). Started by the bootstrap in viewer.html as an ES module; reads the
// motions embedded by skelanim.viz.viewer from <script id="skelanim-data">.
//
// Data (one entry per motion, see skelanim/viz/viewer.py): names/parents/end_site per point, fps, frames,
// height (metres), and world positions already in metres, Y up, floor at y = 0, frame 0's root over the
// origin; quantised to uint16 per axis (value = lo[axis] + q * step[axis]), little-endian, base64.
//
// Test hooks live on window.skelanimViewer (created by the bootstrap): ready, error, frameCount, frame,
// setFrame(i), play(), pause(), isPlaying(), setSpeed(x), layout, setLayout("side"|"overlay"), setFollow(bool),
// setSkeletonVisible(bool), jointScreenPositions(motion), jointWorldPositions(motion), hoveredJoint(),
// motions, render().

import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";

const api = window.skelanimViewer || (window.skelanimViewer = { ready: false, error: null });
const PALETTE = [0xff8c42, 0x4cc9f0, 0x80ed99, 0xf72585, 0xffd166, 0xc77dff, 0x90be6d, 0xf94144];
const $ = (id) => document.getElementById(id);

/** Decode the base64 uint16 positions of one motion into a Float32Array of (frames * points * 3). */
function decodePositions(m) {
  const bin = atob(m.positions);
  const n = bin.length >>> 1;
  const out = new Float32Array(n);
  const lo = m.lo;
  const step = m.step;
  for (let i = 0, a = 0; i < n; i++) {
    out[i] = lo[a] + (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) * step[a];
    a = a === 2 ? 0 : a + 1;
  }
  return out;
}

const Y_AXIS = new THREE.Vector3(0, 1, 0);
const _m = new THREE.Matrix4();
const _q = new THREE.Quaternion();
const _s = new THREE.Vector3();
const _a = new THREE.Vector3();
const _b = new THREE.Vector3();
const _d = new THREE.Vector3();

/** One motion drawn as spheres (joints, End Sites) and cylinders (bones). */
class Figure {
  constructor(m, index) {
    this.index = index;
    this.name = m.name;
    this.names = m.names;
    this.parents = m.parents;
    this.isEnd = m.end_site;
    this.numPoints = m.names.length;
    this.numFrames = m.frames;
    this.fps = m.fps;
    this.height = m.height;
    this.pos = decodePositions(m);
    this.frame = 0;
    this.color = new THREE.Color(PALETTE[index % PALETTE.length]);
    this.group = new THREE.Group();
    this.group.name = m.name;

    // Radii: a fraction of the height, shrunk where bones are short (fingers) so spheres do not merge.
    const base = Math.max(0.018 * this.height, 1e-3);
    const shortest = new Float32Array(this.numPoints).fill(Infinity);
    for (let j = 0; j < this.numPoints; j++) {
      const p = this.parents[j];
      if (p < 0) continue;
      const len = this.distance(0, j, p);
      if (len > 1e-6) {
        shortest[j] = Math.min(shortest[j], len);
        shortest[p] = Math.min(shortest[p], len);
      }
    }
    this.radius = new Float32Array(this.numPoints);
    for (let j = 0; j < this.numPoints; j++) {
      const r = Math.min(base, 0.4 * shortest[j]);
      this.radius[j] = Math.max(r, 0.3 * base) * (this.isEnd[j] ? 0.75 : 1);
    }
    this.boneChild = [];
    for (let j = 0; j < this.numPoints; j++) if (this.parents[j] >= 0) this.boneChild.push(j);

    const jointMaterial = new THREE.MeshStandardMaterial({ color: this.color, roughness: 0.45, metalness: 0.05 });
    const boneColor = this.color.clone().lerp(new THREE.Color(0xffffff), 0.45);
    const boneMaterial = new THREE.MeshStandardMaterial({ color: boneColor, roughness: 0.6, metalness: 0.0 });
    const sphere = new THREE.SphereGeometry(1, 18, 12);
    const cylinder = new THREE.CylinderGeometry(1, 1, 1, 12, 1);
    cylinder.translate(0, 0.5, 0);
    this.joints = new THREE.InstancedMesh(sphere, jointMaterial, this.numPoints);
    this.bones = new THREE.InstancedMesh(cylinder, boneMaterial, Math.max(1, this.boneChild.length));
    this.bones.count = this.boneChild.length;
    for (const mesh of [this.joints, this.bones]) {
      mesh.frustumCulled = false; // instances move every frame; the bounding sphere is refreshed for picking only
      mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
      mesh.userData.figure = this;
      this.group.add(mesh);
    }
    this.bounds = this.computeBounds();
    this.setFrame(0);
  }

  /** Distance between points i and j at frame f. */
  distance(f, i, j) {
    const o = f * this.numPoints * 3;
    const p = this.pos;
    return Math.hypot(p[o + 3 * i] - p[o + 3 * j], p[o + 3 * i + 1] - p[o + 3 * j + 1], p[o + 3 * i + 2] - p[o + 3 * j + 2]);
  }

  /** Axis-aligned bounds of every point over every frame (figure's own coordinates). */
  computeBounds() {
    const box = new THREE.Box3();
    const p = this.pos;
    for (let i = 0; i < p.length; i += 3) box.expandByPoint(_a.set(p[i], p[i + 1], p[i + 2]));
    return box;
  }

  /** Local (unshifted) position of point j at the current frame, into target. */
  localPoint(j, target) {
    const o = (this.frame * this.numPoints + j) * 3;
    return target.set(this.pos[o], this.pos[o + 1], this.pos[o + 2]);
  }

  /** World position of point j at the current frame, into target. */
  worldPoint(j, target) {
    return this.localPoint(j, target).add(this.group.position);
  }

  /** Pose the meshes at frame f (clamped to the motion's frames). */
  setFrame(f) {
    this.frame = Math.max(0, Math.min(this.numFrames - 1, f | 0));
    for (let j = 0; j < this.numPoints; j++) {
      const r = this.radius[j];
      _m.compose(this.localPoint(j, _a), _q.identity(), _s.set(r, r, r));
      this.joints.setMatrixAt(j, _m);
    }
    for (let k = 0; k < this.boneChild.length; k++) {
      const c = this.boneChild[k];
      const p = this.parents[c];
      this.localPoint(p, _a);
      this.localPoint(c, _b);
      _d.subVectors(_b, _a);
      const len = _d.length();
      if (len > 1e-9) _q.setFromUnitVectors(Y_AXIS, _d.multiplyScalar(1 / len));
      else _q.identity();
      const r = 0.5 * Math.min(this.radius[p], this.radius[c]);
      _m.compose(_a, _q, _s.set(r, len, r));
      this.bones.setMatrixAt(k, _m);
    }
    this.joints.instanceMatrix.needsUpdate = true;
    this.bones.instanceMatrix.needsUpdate = true;
    this.joints.computeBoundingSphere();
  }
}

function showMessage(text) {
  const box = $("skelanim-message");
  box.textContent = text;
  box.style.display = "block";
}

function start() {
  const data = JSON.parse($("skelanim-data").textContent);
  const params = new URLSearchParams(window.location.search);
  const stage = $("skelanim-stage");

  let renderer;
  try {
    renderer = new THREE.WebGLRenderer({ antialias: true });
  } catch (err) {
    const text = "This viewer needs WebGL, which this browser did not provide (" + (err && err.message ? err.message : err) + ").";
    showMessage(text);
    api.error = text;
    return;
  }
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  stage.appendChild(renderer.domElement);
  const canvas = renderer.domElement;
  canvas.tabIndex = 0;

  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0x1d2026);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x3a3f4b, 2.2));
  const sun = new THREE.DirectionalLight(0xffffff, 1.6);
  sun.position.set(3, 8, 5);
  scene.add(sun);

  const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 1000);
  const controls = new OrbitControls(camera, canvas);
  controls.enableDamping = false;

  const figures = data.motions.map((m, i) => new Figure(m, i));
  for (const fig of figures) scene.add(fig.group);

  const highlight = new THREE.Mesh(
    new THREE.SphereGeometry(1, 18, 12),
    new THREE.MeshBasicMaterial({ color: 0xffffff, transparent: true, opacity: 0.55, depthTest: false }),
  );
  highlight.visible = false;
  highlight.renderOrder = 10;
  scene.add(highlight);

  let grid = null;
  const refFps = figures.length ? Math.max(...figures.map((f) => f.fps)) : 30;
  const frameCount = figures.length
    ? Math.max(...figures.map((f) => Math.round(((f.numFrames - 1) / f.fps) * refFps) + 1))
    : 0;

  const state = {
    frame: 0,
    time: 0,
    playing: false,
    speed: 1,
    layout: data.overlay ? "overlay" : "side",
    follow: false,
    followAnchor: null,
    hovered: null,
    pointer: null,
  };

  // ---------------------------------------------------------------- layout and camera
  function sceneBounds() {
    const box = new THREE.Box3();
    for (const fig of figures) {
      if (!fig.group.visible) continue;
      box.union(fig.bounds.clone().translate(fig.group.position));
    }
    if (box.isEmpty()) box.set(new THREE.Vector3(-0.5, 0, -0.5), new THREE.Vector3(0.5, 1.7, 0.5));
    return box;
  }

  function rebuildGrid() {
    if (grid) {
      scene.remove(grid);
      grid.geometry.dispose();
      grid.material.dispose();
    }
    const box = sceneBounds();
    const extent = Math.max(Math.abs(box.min.x), Math.abs(box.max.x), Math.abs(box.min.z), Math.abs(box.max.z));
    const size = 2 * Math.ceil(extent + 2);
    grid = new THREE.GridHelper(size, size, 0x6b7285, 0x3a3f4b);
    scene.add(grid);
  }

  /** Bounds of the visible figures' current poses, padded by a fraction of their height. */
  function poseBounds() {
    const box = new THREE.Box3();
    for (const fig of figures) {
      if (!fig.group.visible) continue;
      for (let j = 0; j < fig.numPoints; j++) box.expandByPoint(fig.worldPoint(j, _a));
      box.expandByScalar(0.15 * fig.height);
    }
    return box.isEmpty() ? sceneBounds() : box;
  }

  /** The least distance from ``center`` along ``direction`` (unit, towards the eye) that keeps all 8 corners of
   * ``box`` in view. */
  function distanceToFit(box, center, direction) {
    const back = direction.clone();
    const right = new THREE.Vector3().crossVectors(Y_AXIS, back);
    if (right.lengthSq() < 1e-12) right.set(1, 0, 0); // looking straight down or up
    right.normalize();
    const up = new THREE.Vector3().crossVectors(back, right);
    const tanV = Math.tan(THREE.MathUtils.degToRad(camera.fov) / 2);
    const tanH = tanV * camera.aspect;
    let distance = 0.5;
    for (let corner = 0; corner < 8; corner++) {
      const p = new THREE.Vector3(
        corner & 1 ? box.max.x : box.min.x,
        corner & 2 ? box.max.y : box.min.y,
        corner & 4 ? box.max.z : box.min.z,
      ).sub(center);
      const depth = p.dot(back);
      distance = Math.max(distance, depth + Math.abs(p.dot(right)) / tanH, depth + Math.abs(p.dot(up)) / tanV);
    }
    return distance;
  }

  /** Aim the camera at everything (or, when following, at the current poses) from the front-right. */
  function fitCamera() {
    const box = state.follow ? poseBounds() : sceneBounds();
    const center = box.getCenter(new THREE.Vector3());
    const direction = new THREE.Vector3(0.45, 0.3, 1).normalize();
    // Camera axes for this direction; the distance is the least that keeps all 8 box corners in view.
    const distance = 1.08 * distanceToFit(box, center, direction);
    controls.target.copy(center);
    camera.position.copy(center).addScaledVector(direction, distance);
    camera.near = Math.max(distance / 500, 0.005);
    camera.far = distance * 50 + 100;
    camera.updateProjectionMatrix();
    controls.update();
    state.followAnchor = null;
    if (state.follow) followFigures();
  }

  function applyLayout() {
    if (state.layout === "overlay" || figures.length < 2) {
      for (const fig of figures) fig.group.position.set(0, 0, 0);
    } else {
      // Line the figures up along the horizontal axis (X or Z) they travel least along, so their paths
      // run side by side instead of through each other.
      const sizes = figures.map((f) => f.bounds.getSize(new THREE.Vector3()));
      const axis = sizes.reduce((t, v) => t + v.x, 0) <= sizes.reduce((t, v) => t + v.z, 0) ? "x" : "z";
      const gap = 0.4 * Math.max(...figures.map((f) => f.height), 0.5);
      let cursor = 0;
      for (const fig of figures) {
        fig.group.position.set(0, 0, 0);
        fig.group.position[axis] = cursor - fig.bounds.min[axis];
        cursor = fig.group.position[axis] + fig.bounds.max[axis] + gap;
      }
      const shift = (cursor - gap) / 2;
      for (const fig of figures) fig.group.position[axis] -= shift;
    }
    $("skelanim-layout").value = state.layout;
    rebuildGrid();
    fitCamera();
  }

  function resize() {
    const w = Math.max(1, stage.clientWidth);
    const h = Math.max(1, stage.clientHeight);
    renderer.setSize(w, h, false);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
  }

  // ---------------------------------------------------------------- frames and playback
  const timeline = $("skelanim-timeline");
  const label = $("skelanim-frame");
  timeline.max = String(Math.max(0, frameCount - 1));

  function showFrame(i) {
    state.frame = frameCount ? Math.max(0, Math.min(frameCount - 1, i | 0)) : 0;
    const t = state.frame / refFps;
    for (const fig of figures) fig.setFrame(Math.round(t * fig.fps));
    timeline.value = String(state.frame);
    label.textContent = frameCount
      ? `frame ${state.frame} / ${frameCount - 1} \u00b7 ${t.toFixed(2)} s`
      : "no motion";
    if (state.follow) followFigures();
    if (state.pointer) updateHover();
  }

  function followFigures() {
    const centre = new THREE.Vector3();
    let n = 0;
    for (const fig of figures) {
      if (!fig.group.visible) continue;
      centre.add(fig.worldPoint(0, _a));
      n++;
    }
    if (!n) return;
    centre.multiplyScalar(1 / n);
    centre.y = 0;
    if (state.followAnchor) {
      const delta = centre.clone().sub(state.followAnchor);
      controls.target.add(delta);
      camera.position.add(delta);
    }
    state.followAnchor = centre;
    // figures whose paths part (an overlay of two walks) had left the view: back off as far as their poses need,
    // never closer than the viewer has the camera
    const offset = camera.position.clone().sub(controls.target);
    const current = offset.length();
    const needed = 1.08 * distanceToFit(poseBounds(), controls.target, offset.clone().normalize());
    if (needed > current) {
      camera.position.copy(controls.target).addScaledVector(offset, needed / current);
      camera.far = Math.max(camera.far, needed * 50 + 100);
      camera.updateProjectionMatrix();
    }
  }

  function setPlaying(on) {
    state.playing = Boolean(on) && frameCount > 1;
    $("skelanim-play").textContent = state.playing ? "Pause" : "Play";
  }

  /** Keep the camera on the figures as they travel (and frame their current poses). */
  function setFollow(on) {
    state.follow = Boolean(on);
    $("skelanim-follow").checked = state.follow;
    fitCamera();
    render();
  }

  function setFrame(i) {
    state.time = (i | 0) / refFps;
    showFrame(i);
    render();
  }

  // ---------------------------------------------------------------- hover
  const raycaster = new THREE.Raycaster();
  const ndc = new THREE.Vector2();
  const tooltip = $("skelanim-tooltip");

  function screenOf(world, rect) {
    const v = world.clone().project(camera);
    return {
      x: rect.left + ((v.x + 1) / 2) * rect.width,
      y: rect.top + ((1 - v.y) / 2) * rect.height,
      depth: v.z,
      visible: v.z > -1 && v.z < 1 && Math.abs(v.x) <= 1 && Math.abs(v.y) <= 1,
    };
  }

  function pick(clientX, clientY) {
    const rect = canvas.getBoundingClientRect();
    ndc.set(((clientX - rect.left) / rect.width) * 2 - 1, -((clientY - rect.top) / rect.height) * 2 + 1);
    camera.updateMatrixWorld();
    raycaster.setFromCamera(ndc, camera);
    const meshes = figures.filter((f) => f.group.visible).map((f) => f.joints);
    const hits = raycaster.intersectObjects(meshes, false);
    if (hits.length && hits[0].instanceId !== undefined) {
      return { figure: hits[0].object.userData.figure, joint: hits[0].instanceId };
    }
    // Small joints (fingers) are hard to hit: take the nearest projected joint within a few pixels.
    let best = null;
    let bestDist = 7;
    for (const fig of figures) {
      if (!fig.group.visible) continue;
      for (let j = 0; j < fig.numPoints; j++) {
        const s = screenOf(fig.worldPoint(j, _b), rect);
        const d = Math.hypot(s.x - clientX, s.y - clientY);
        if (s.visible && d < bestDist) {
          bestDist = d;
          best = { figure: fig, joint: j };
        }
      }
    }
    return best;
  }

  function updateHover() {
    const hit = state.pointer ? pick(state.pointer.x, state.pointer.y) : null;
    state.hovered = hit;
    if (!hit) {
      tooltip.style.display = "none";
      highlight.visible = false;
      return;
    }
    const name = hit.figure.names[hit.joint];
    tooltip.textContent = figures.length > 1 ? `${name} \u2014 ${hit.figure.name}` : name;
    tooltip.style.display = "block";
    // Beside the pointer, flipped to the other side near the window's right or bottom edge.
    const { x, y } = state.pointer;
    const left = x + 14 + tooltip.offsetWidth > window.innerWidth - 4 ? x - 14 - tooltip.offsetWidth : x + 14;
    const top = y + 12 + tooltip.offsetHeight > window.innerHeight - 4 ? y - 12 - tooltip.offsetHeight : y + 12;
    tooltip.style.left = `${Math.max(0, left)}px`;
    tooltip.style.top = `${Math.max(0, top)}px`;
    hit.figure.worldPoint(hit.joint, highlight.position);
    highlight.scale.setScalar(hit.figure.radius[hit.joint] * 1.6);
    highlight.visible = true;
  }

  canvas.addEventListener("pointermove", (event) => {
    state.pointer = { x: event.clientX, y: event.clientY };
    updateHover();
  });
  canvas.addEventListener("pointerleave", () => {
    state.pointer = null;
    updateHover();
  });

  // ---------------------------------------------------------------- controls
  $("skelanim-play").addEventListener("click", () => setPlaying(!state.playing));
  timeline.addEventListener("input", () => {
    setPlaying(false);
    setFrame(Number(timeline.value));
  });
  $("skelanim-speed").addEventListener("change", (event) => {
    state.speed = Number(event.target.value) || 1;
  });
  $("skelanim-layout").addEventListener("change", (event) => {
    state.layout = event.target.value;
    applyLayout();
  });
  $("skelanim-follow").addEventListener("change", (event) => setFollow(event.target.checked));
  $("skelanim-reset").addEventListener("click", () => fitCamera());
  window.addEventListener("keydown", (event) => {
    const tag = event.target && event.target.tagName;
    if (event.key === " " && tag !== "BUTTON" && tag !== "SELECT") {
      event.preventDefault();
      setPlaying(!state.playing);
    } else if ((event.key === "ArrowRight" || event.key === "ArrowLeft") && tag !== "INPUT" && tag !== "SELECT") {
      event.preventDefault();
      setPlaying(false);
      setFrame(state.frame + (event.key === "ArrowRight" ? 1 : -1));
    }
  });
  if (figures.length < 2) $("skelanim-layout-label").style.display = "none";

  const legend = $("skelanim-legend");
  for (const fig of figures) {
    const row = document.createElement("div");
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = `#${fig.color.getHexString()}`;
    const text = document.createElement("span");
    text.textContent = `${fig.name} \u00b7 ${fig.numPoints} points, ${fig.numFrames} frames @ ${+fig.fps.toFixed(3)} fps`;
    row.append(swatch, text);
    legend.appendChild(row);
  }
  if (!figures.length) showMessage("No motion to show.");

  // ---------------------------------------------------------------- loop
  function render() {
    renderer.render(scene, camera);
  }

  let last = performance.now();
  function tick(now) {
    const dt = Math.min(0.25, Math.max(0, (now - last) / 1000));
    last = now;
    if (state.playing && frameCount > 1) {
      const duration = frameCount / refFps;
      state.time = (state.time + dt * state.speed) % duration;
      const next = Math.floor(state.time * refFps + 1e-6);
      if (next !== state.frame) showFrame(next);
    }
    controls.update();
    render();
    requestAnimationFrame(tick);
  }

  // ---------------------------------------------------------------- test hooks
  Object.assign(api, {
    frameCount,
    fps: refFps,
    motions: figures.map((f) => ({ name: f.name, points: f.numPoints, frames: f.numFrames, fps: f.fps, names: f.names.slice() })),
    setFrame,
    play: () => setPlaying(true),
    pause: () => setPlaying(false),
    isPlaying: () => state.playing,
    setSpeed: (x) => {
      state.speed = Number(x) || 1;
    },
    setLayout: (mode) => {
      state.layout = mode === "overlay" ? "overlay" : "side";
      applyLayout();
      render();
    },
    setFollow,
    setSkeletonVisible: (on) => {
      for (const fig of figures) fig.group.visible = Boolean(on);
      if (!on) highlight.visible = false;
      render();
    },
    jointWorldPositions: (motion = 0) => {
      const fig = figures[motion];
      return fig ? fig.names.map((name, j) => ({ name, ...fig.worldPoint(j, new THREE.Vector3()) })) : [];
    },
    jointScreenPositions: (motion = 0) => {
      const fig = figures[motion];
      if (!fig) return [];
      camera.updateMatrixWorld();
      const rect = canvas.getBoundingClientRect();
      return fig.names.map((name, j) => ({ name, ...screenOf(fig.worldPoint(j, new THREE.Vector3()), rect) }));
    },
    hoveredJoint: () => (state.hovered ? state.hovered.figure.names[state.hovered.joint] : null),
    render,
  });
  // Live values (Object.assign would copy a getter's value once).
  Object.defineProperties(api, {
    frame: { get: () => state.frame, configurable: true, enumerable: true },
    layout: { get: () => state.layout, configurable: true, enumerable: true },
  });

  // Follow from the start when a figure travels far (more than 2.5 heights), else frame everything.
  state.follow = figures.some((f) => {
    const size = f.bounds.getSize(new THREE.Vector3());
    return Math.max(size.x, size.z) > 2.5 * f.height;
  });
  $("skelanim-follow").checked = state.follow;
  resize();
  window.addEventListener("resize", () => {
    resize();
    render();
  });
  applyLayout();
  const startFrame = Number(params.get("frame"));
  setFrame(Number.isFinite(startFrame) ? startFrame : 0);
  if (state.follow) fitCamera();
  const autoplay = params.has("autoplay") ? params.get("autoplay") !== "0" : data.autoplay !== false;
  setPlaying(autoplay);
  render();
  api.ready = true;
  requestAnimationFrame(tick);
}

try {
  start();
} catch (err) {
  api.error = String(err && err.stack ? err.stack : err);
  showMessage(`The viewer failed to start: ${err && err.message ? err.message : err}`);
  throw err;
}
