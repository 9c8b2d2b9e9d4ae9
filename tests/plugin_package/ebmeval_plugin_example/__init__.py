"""An example ebmeval plugin: the modules named by its ``ebmeval`` entry points register the components."""
