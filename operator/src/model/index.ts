/**
 * The operator's model: the wire types of the four kinds and the core objects around them, and
 * the helpers every controller (and the data plane) reads them with. It sits below the controllers
 * and above the runtime; nothing here does I/O.
 */
export * from './generated';
export * from './objects';
export * from './resources';
export * from './meta';
export * from './time';
export * from './conditions';
export * from './merge-patch';
export * from './cache-shape';
export * from './idle';
